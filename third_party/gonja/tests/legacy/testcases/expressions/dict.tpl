{{ {'dict': 'of', 'key': 'and', 'value': 'pairs'} }}
{{ {"dict": "of", "key": "and", "value": "pairs"} }}
{{ {'key': 5, 42: 'meaning of life'} }}
