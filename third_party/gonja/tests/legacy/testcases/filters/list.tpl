{{ "abcd"|list }}
{{ ["a", "b"]|list }}
{{ ("a", "b")|list }}
