{{ not true }}
{{ not (true or false) }}
{{ true or false }}
{{ false or false }}
{{ true and (true and (true and (true and (1 == 1 or false)))) }}
{{ None or True }}
{{ None and True }}