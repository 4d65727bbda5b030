; TSX: same patterns as typescript.scm.
(function_declaration name: (identifier) @name) @definition.function
(generator_function_declaration name: (identifier) @name) @definition.function
(class_declaration name: (_) @name) @definition.class
(class name: (_) @name) @definition.class
(method_definition name: (_) @name) @definition.method

; const f = () => {}, let g = function () {}
(lexical_declaration
  (variable_declarator
    name: (identifier) @name
    value: [(arrow_function body: (_) @body) (function_expression body: (_) @body) (generator_function body: (_) @body)])) @definition.function
(variable_declaration
  (variable_declarator
    name: (identifier) @name
    value: [(arrow_function body: (_) @body) (function_expression body: (_) @body) (generator_function body: (_) @body)])) @definition.function

; obj.f = function () {}, module.exports.f = () => {}
(expression_statement
  (assignment_expression
    left: [(identifier) @name (member_expression property: (property_identifier) @name)]
    right: [(arrow_function body: (_) @body) (function_expression body: (_) @body)])) @definition.function

; { f: function () {}, g: () => {} }
(pair
  key: (property_identifier) @name
  value: [(arrow_function body: (_) @body) (function_expression body: (_) @body)]) @definition.function

; top-level constants
(program (lexical_declaration (variable_declarator name: (identifier) @name)) @definition.constant)
(program (export_statement declaration: (lexical_declaration (variable_declarator name: (identifier) @name)) @definition.constant))

; TypeScript
(abstract_class_declaration name: (_) @name) @definition.class
(interface_declaration name: (_) @name) @definition.interface
(type_alias_declaration name: (_) @name) @definition.type
(enum_declaration name: (_) @name) @definition.enum
(internal_module name: (_) @name) @definition.namespace
(module name: (_) @name) @definition.module
(function_signature name: (identifier) @name) @definition.function
(method_signature name: (_) @name) @definition.method
(abstract_method_signature name: (_) @name) @definition.method
(public_field_definition name: (_) @name) @definition.field
(property_signature name: (_) @name) @definition.field
; `export { a, b as c } from './x'`: names made public here though defined elsewhere
(export_statement (export_clause (export_specifier name: (_) @name !alias) @definition.reexport) source: (_))
(export_statement (export_clause (export_specifier alias: (_) @name) @definition.reexport) source: (_))
