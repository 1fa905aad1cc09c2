Start#{% block body %}Default body{% endblock %}#End
