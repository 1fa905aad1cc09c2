{{ simple.misc_list|join(", ") }}
