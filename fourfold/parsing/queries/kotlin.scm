; Kotlin: classes, interfaces, enum classes, objects (kind module), functions, type aliases,
; top-level properties.
(class_declaration "interface" name: (identifier) @name) @definition.interface
(class_declaration name: (identifier) @name (enum_class_body)) @definition.enum
(class_declaration name: (identifier) @name) @definition.class
(object_declaration name: (identifier) @name) @definition.module
(companion_object name: (identifier) @name) @definition.module
(function_declaration name: (identifier) @name) @definition.function
(type_alias type: (identifier) @name) @definition.type
(source_file (property_declaration (variable_declaration (identifier) @name)) @definition.constant)
(class_body (property_declaration (variable_declaration (identifier) @name)) @definition.field)
