{{ 42|abs }}
{{ -51|abs }}
{{ 0|abs }}
{{ '%0.1f'|format(-51.0|abs) }}
