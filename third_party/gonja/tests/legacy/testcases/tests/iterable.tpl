{{ 'gonja' is iterable }}
{{ ['gonja'] is iterable }}
{{ {"key": "value"} is iterable }}
{{ 3 is iterable }}
{{ true is iterable }}