-- ISO 3166-2 subdivisions loaded by the countries example (fixtures /countries API).
CREATE TABLE IF NOT EXISTS subdivisions (
    code         text PRIMARY KEY,
    country_code text NOT NULL,
    name         text NOT NULL,
    type         text,
    parent       text,
    updated_at   timestamptz NOT NULL DEFAULT now()
);
