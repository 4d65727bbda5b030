(import_declaration) @reference.import.stmt
(method_invocation object: (_) @receiver name: (identifier) @reference.call)
(method_invocation !object name: (identifier) @reference.call)
(object_creation_expression type: (_) @reference.call)
(superclass (_) @reference.inherit)
(super_interfaces (type_list (_) @reference.inherit))
(extends_interfaces (type_list (_) @reference.inherit))
(formal_parameter type: [(type_identifier) (scoped_type_identifier) (generic_type)] @reference.ref)
(field_declaration type: [(type_identifier) (scoped_type_identifier) (generic_type)] @reference.ref)
(method_declaration type: [(type_identifier) (scoped_type_identifier) (generic_type)] @reference.ref)
(local_variable_declaration type: [(type_identifier) (scoped_type_identifier) (generic_type)] @reference.ref)
(package_declaration [(scoped_identifier) (identifier)] @reference.package)

; what the code says of the types of names: fields, parameters, locals, constructors, results
(field_declaration type: [(type_identifier) (scoped_type_identifier) (generic_type)] @bind.type declarator: (variable_declarator name: (identifier) @reference.bind))
(formal_parameter type: [(type_identifier) (scoped_type_identifier) (generic_type)] @bind.type name: (identifier) @reference.bind)
(local_variable_declaration type: [(type_identifier) (scoped_type_identifier) (generic_type)] @bind.type declarator: (variable_declarator name: (identifier) @reference.bind))
(local_variable_declaration declarator: (variable_declarator name: (identifier) @reference.bind value: (object_creation_expression type: [(type_identifier) (scoped_type_identifier) (generic_type)] @bind.call)))
(method_declaration type: [(type_identifier) (scoped_type_identifier) (generic_type)] @bind.type name: (identifier) @reference.bind.return)
