; Zig: functions, container declarations bound to names (struct, enum, union, opaque),
; fields, top-level constants with literal values. Functions in a struct are methods.
(function_declaration name: (identifier) @name) @definition.function
(variable_declaration (identifier) @name (struct_declaration)) @definition.struct
(variable_declaration (identifier) @name (enum_declaration)) @definition.enum
(variable_declaration (identifier) @name (union_declaration)) @definition.struct
(variable_declaration (identifier) @name (opaque_declaration)) @definition.struct
(variable_declaration (identifier) @name (error_set_declaration)) @definition.enum
(struct_declaration (container_field name: (identifier) @name) @definition.field)
(union_declaration (container_field name: (identifier) @name) @definition.field)
(source_file (variable_declaration (identifier) @name
  [(integer) (float) (string) (multiline_string) (binary_expression) (struct_initializer)
   (anonymous_struct_initializer) (call_expression)]) @definition.constant)
