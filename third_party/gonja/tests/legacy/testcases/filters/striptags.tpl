{{ "<strong><i>Hello!</i></strong>"|striptags|safe }}
