(preproc_include path: (_) @reference.import)
(call_expression function: [(identifier) (field_expression)] @reference.call)
(parameter_declaration type: (struct_specifier name: (type_identifier) @reference.ref))
(parameter_declaration type: (type_identifier) @reference.ref)
