{{ 42 is ne 42 }}
{{ 42 is != 42 }}
{{ 42 is ne 3 }}
{{ 42 is != 3 }}
{{ 'gonja' is ne 'jinja' }}
{{ 'gonja' is ne 'gonja' }}
