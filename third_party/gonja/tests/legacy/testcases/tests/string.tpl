{{ 'gonja' is string }}
{{ simple.str is string}}
{{ 42 is string }}
{{ 42.0 is string }}
{{ [1, 2, 3] is string }}
