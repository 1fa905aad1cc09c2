{{ "<script>" }}
{{ "<script>"|safe }}
