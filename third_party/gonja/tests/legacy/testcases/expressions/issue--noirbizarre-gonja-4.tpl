{{ a is defined and a == 'x' }}
{{ 1 is number and "1" is string }}