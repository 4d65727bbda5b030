; C++: functions, methods (in-class and out-of-line Class::method), classes, structs,
; unions, enums, namespaces, typedefs/aliases, macros. Qualified with "::".
(function_definition
  declarator: [
    (function_declarator declarator: [(identifier) (field_identifier) (qualified_identifier) (destructor_name) (operator_name)] @name)
    (pointer_declarator declarator: (function_declarator declarator: [(identifier) (field_identifier) (qualified_identifier) (operator_name)] @name))
    (reference_declarator (function_declarator declarator: [(identifier) (field_identifier) (qualified_identifier) (operator_name)] @name))
  ]) @definition.function
(field_declaration
  declarator: [
    (function_declarator declarator: [(field_identifier) (identifier) (destructor_name) (operator_name)] @name)
    (pointer_declarator declarator: (function_declarator declarator: [(field_identifier) (identifier)] @name))
    (reference_declarator (function_declarator declarator: [(field_identifier) (identifier)] @name))
  ]) @definition.function
(declaration
  declarator: (function_declarator declarator: [(identifier) (destructor_name)] @name)) @definition.function
(class_specifier name: (_) @name body: (_)) @definition.class
(struct_specifier name: (_) @name body: (_)) @definition.struct
(union_specifier name: (_) @name body: (_)) @definition.struct
(enum_specifier name: (_) @name body: (_)) @definition.enum
(namespace_definition name: (_) @name) @definition.namespace
(type_definition declarator: (type_identifier) @name) @definition.type
(alias_declaration name: (type_identifier) @name) @definition.type
(concept_definition name: (identifier) @name) @definition.type
(preproc_function_def name: (identifier) @name) @definition.macro
(preproc_def name: (identifier) @name) @definition.constant
