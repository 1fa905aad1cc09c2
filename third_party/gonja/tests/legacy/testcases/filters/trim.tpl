{{ '  spaces  ' | trim }}
{{ '#%custom chars#' | trim(chars="#%") }}