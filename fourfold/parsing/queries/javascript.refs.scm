; imports
(import_statement (import_clause (named_imports (import_specifier name: (_) @reference.import !alias))) source: (string (string_fragment) @module))
(import_statement (import_clause (named_imports (import_specifier name: (_) @reference.import alias: (_) @alias))) source: (string (string_fragment) @module))
(import_statement (import_clause (identifier) @reference.import.default) source: (string (string_fragment) @module))
(import_statement (import_clause (namespace_import (identifier) @reference.import.namespace)) source: (string (string_fragment) @module))
(import_statement source: (string (string_fragment) @reference.import))
(export_statement source: (string (string_fragment) @reference.import))
(export_statement "*" source: (string (string_fragment) @module)) @reference.import.star
(export_statement (export_clause (export_specifier name: (_) @reference.import)) source: (string (string_fragment) @module))
(call_expression function: (identifier) @_r (#eq? @_r "require") arguments: (arguments . (string (string_fragment) @reference.import)))
(call_expression function: (import) arguments: (arguments . (string (string_fragment) @reference.import)))

(variable_declarator name: (identifier) @alias value: (call_expression function: (identifier) @_r (#eq? @_r "require") arguments: (arguments . (string (string_fragment) @reference.import))))

; calls
(call_expression function: [(identifier) (member_expression)] @reference.call (#not-eq? @reference.call "require"))
(new_expression constructor: [(identifier) (member_expression)] @reference.call)
(jsx_opening_element name: [(identifier) (member_expression)] @reference.call (#match? @reference.call "^[A-Z]"))
(jsx_self_closing_element name: [(identifier) (member_expression)] @reference.call (#match? @reference.call "^[A-Z]"))

; inheritance
(class_heritage [(identifier) (member_expression)] @reference.inherit)

; what the code says of the types of names: variables and fields assigned a constructed value
(variable_declarator name: (identifier) @reference.bind value: (new_expression constructor: [(identifier) (member_expression)] @bind.call))
(assignment_expression left: (member_expression object: (this)) @reference.bind right: (new_expression constructor: [(identifier) (member_expression)] @bind.call))
