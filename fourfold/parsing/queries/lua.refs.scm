(assignment_statement (variable_list name: (identifier) @alias) (expression_list value: (function_call name: (identifier) @_r (#eq? @_r "require") arguments: (arguments (string content: (_) @reference.import)))))
(function_call name: (identifier) @_r (#any-of? @_r "require" "dofile" "loadfile") arguments: (arguments (string content: (_) @reference.import)))
(function_call name: [(identifier) (dot_index_expression) (method_index_expression)] @reference.call (#not-match? @reference.call "^(require|dofile|loadfile)$"))
