; imports
(import_statement name: (dotted_name) @reference.import)
(import_statement name: (aliased_import name: (dotted_name) @reference.import alias: (identifier) @alias))
(import_from_statement module_name: (_) @module name: (dotted_name) @reference.import)
(import_from_statement module_name: (_) @module name: (aliased_import name: (dotted_name) @reference.import alias: (identifier) @alias))
(import_from_statement module_name: (_) @module (wildcard_import) @reference.import)

; calls (decorators are calls too)
(call function: [(identifier) (attribute)] @reference.call)
(decorator [(identifier) (attribute)] @reference.call)

; inheritance
(class_definition superclasses: (argument_list [(identifier) (attribute)] @reference.inherit))

; type uses in annotations
(type [(identifier) (attribute)] @reference.ref)
(type (generic_type (identifier) @reference.ref))
(type (subscript value: [(identifier) (attribute)] @reference.ref))
(class_definition superclasses: (argument_list (subscript value: [(identifier) (attribute)] @reference.inherit)))

; what the code says of the types of names: annotations, constructor calls, literals
(assignment left: [(identifier) (attribute)] @reference.bind right: (call function: [(identifier) (attribute)] @bind.call))
(assignment left: [(identifier) (attribute)] @reference.bind right: [(dictionary) (dictionary_comprehension) (list) (list_comprehension) (set) (set_comprehension) (tuple) (string) (concatenated_string) (integer) (float)] @bind.literal)
(assignment left: [(identifier) (attribute)] @reference.bind right: [(identifier) (attribute)] @bind.value)
(with_item value: (as_pattern (call function: [(identifier) (attribute)] @bind.call) alias: (as_pattern_target (identifier) @reference.bind)))
(assignment left: [(identifier) (attribute)] @reference.bind type: (type) @bind.type)
(typed_parameter (identifier) @reference.bind type: (type) @bind.type)
(typed_default_parameter name: (identifier) @reference.bind type: (type) @bind.type)
(parameters (dictionary_splat_pattern (identifier) @reference.bind.dict))
(typed_parameter (dictionary_splat_pattern (identifier) @reference.bind.dict))
(parameters (list_splat_pattern (identifier) @reference.bind.tuple))
(typed_parameter (list_splat_pattern (identifier) @reference.bind.tuple))
(function_definition name: (identifier) @reference.bind.return return_type: (type) @bind.type)
