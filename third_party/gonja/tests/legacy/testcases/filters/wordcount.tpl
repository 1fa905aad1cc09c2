{{ ""|wordcount }}
{% filter wordcount %}This is a test{% endfilter %}
