{% extends "extends_super.tpl" %}

{% block content %}{{ super() }}extends-level-2{% endblock %}
