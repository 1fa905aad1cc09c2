{{ simple is sameas simple }}
{{ 42 is sameas simple }}
{{ 42 is sameas 42 }}
{{ number is sameas 11 }}
{{ simple.nil is sameas nil }}
{{ simple.nil is sameas None }}
