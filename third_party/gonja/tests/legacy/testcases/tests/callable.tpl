{{ simple is callable }}
{{ simple.func_add is callable }}
