(using_directive) @reference.import.stmt
(invocation_expression function: [(identifier) (member_access_expression) (generic_name)] @reference.call)
(object_creation_expression type: [(identifier) (qualified_name) (generic_name)] @reference.call)
(base_list [(identifier) (qualified_name) (generic_name)] @reference.inherit)
(base_list (primary_constructor_base_type type: (_) @reference.inherit))
(parameter type: [(identifier) (qualified_name) (generic_name)] @reference.ref)
(namespace_declaration name: (_) @reference.package)
(file_scoped_namespace_declaration name: (_) @reference.package)
