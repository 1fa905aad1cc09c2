"": {{ "" | length }}
"nope": {{ "nope" | length }}
[]: {{ [] | length }}
["one"]: {{ ["one"] | length }}
{}: {{ {} | length }}
{"a": "b"}: {{ {"a": "b"} | length }}
