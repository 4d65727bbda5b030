(import_declaration) @reference.import.stmt
(call_expression function: [(identifier) (field_expression) (generic_function)] @reference.call)
(instance_expression [(type_identifier) (stable_type_identifier) (generic_type)] @reference.call)
(extends_clause type: (_) @reference.inherit)
(parameter type: [(type_identifier) (stable_type_identifier) (generic_type)] @reference.ref)
(package_clause name: (_) @reference.package)
