; Lua: functions (M.f gets scope M, M:m is a method), functions assigned to names/fields.
(function_declaration name: (identifier) @name) @definition.function
(function_declaration name: (dot_index_expression table: (_) @scope field: (identifier) @name)) @definition.function
(function_declaration name: (method_index_expression table: (_) @scope method: (identifier) @name)) @definition.method
(assignment_statement
  (variable_list . name: [
    (identifier) @name
    (dot_index_expression table: (_) @scope field: (identifier) @name)])
  (expression_list . value: (function_definition body: (_)? @body))) @definition.function
(variable_declaration
  (assignment_statement
    (variable_list . name: (identifier) @name)
    (expression_list . value: (function_definition)))) @definition.function
(field
  name: (identifier) @name
  value: (function_definition)) @definition.function
