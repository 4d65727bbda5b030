(import_spec name: (_)? @alias path: (_) @reference.import)
(call_expression function: [(identifier) (selector_expression)] @reference.call)
(composite_literal type: [(type_identifier) (qualified_type)] @reference.call)
; embedding
(field_declaration_list (field_declaration !name type: [(type_identifier) (qualified_type)] @reference.inherit))
(field_declaration_list (field_declaration !name type: (pointer_type [(type_identifier) (qualified_type)] @reference.inherit)))
(interface_type (type_elem [(type_identifier) (qualified_type)] @reference.inherit))
; type uses
(parameter_declaration type: [(type_identifier) (qualified_type)] @reference.ref)
(parameter_declaration type: (pointer_type [(type_identifier) (qualified_type)] @reference.ref))
(field_declaration name: (_) type: [(type_identifier) (qualified_type)] @reference.ref)
(field_declaration name: (_) type: (pointer_type [(type_identifier) (qualified_type)] @reference.ref))
(method_declaration receiver: (parameter_list (parameter_declaration type: (pointer_type (type_identifier) @reference.ref))))
