(variable_declaration (identifier) @alias (builtin_function (builtin_identifier) @_b (#eq? @_b "@import") (arguments (string (string_content) @reference.import))))
(builtin_function (builtin_identifier) @_b (#eq? @_b "@import") (arguments (string (string_content) @reference.import)))
(call_expression function: [(identifier) (field_expression)] @reference.call)
