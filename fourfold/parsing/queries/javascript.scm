; JavaScript: functions, classes, methods, functions bound to names, top-level constants.
(function_declaration name: (identifier) @name) @definition.function
(generator_function_declaration name: (identifier) @name) @definition.function
(class_declaration name: (_) @name) @definition.class
(class name: (_) @name) @definition.class
(method_definition name: (_) @name) @definition.method
(field_definition property: (property_identifier) @name) @definition.field

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
; `export { a, b as c } from './x'`: names made public here though defined elsewhere
(export_statement (export_clause (export_specifier name: (_) @name !alias) @definition.reexport) source: (_))
(export_statement (export_clause (export_specifier alias: (_) @name) @definition.reexport) source: (_))
