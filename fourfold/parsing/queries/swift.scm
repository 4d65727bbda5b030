; Swift: classes, structs, enums, actors, extensions (kind impl), protocols, functions,
; initializers, type aliases, properties in types.
(class_declaration "struct" name: (type_identifier) @name) @definition.struct
(class_declaration "enum" name: (type_identifier) @name) @definition.enum
(class_declaration "extension" name: (_) @name) @definition.impl
(class_declaration name: (type_identifier) @name) @definition.class
(protocol_declaration name: (type_identifier) @name) @definition.interface
(function_declaration name: (simple_identifier) @name) @definition.function
(protocol_function_declaration name: (simple_identifier) @name) @definition.method
(init_declaration "init" @name) @definition.method
(deinit_declaration "deinit" @name) @definition.method
(typealias_declaration name: (type_identifier) @name) @definition.type
(class_body (property_declaration name: (pattern bound_identifier: (simple_identifier) @name)) @definition.field)
(source_file (property_declaration name: (pattern bound_identifier: (simple_identifier) @name)) @definition.variable)
