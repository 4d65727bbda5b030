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
