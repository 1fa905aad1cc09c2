{{ dict(foo='bar') }}
