{% for i in range(10) %}{{ i }}{% endfor %}
{% for i in range(5, 10) %}{{ i }}{% endfor %}
{% for i in range(2, 10, 2) %}{{ i }}{% endfor %}
