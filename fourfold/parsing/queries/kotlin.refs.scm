(import) @reference.import.stmt
(call_expression . [(identifier) (navigation_expression)] @reference.call)
(delegation_specifier (user_type) @reference.inherit)
(delegation_specifier (constructor_invocation (user_type) @reference.inherit))
(parameter (user_type) @reference.ref)
(package_header (qualified_identifier) @reference.package)
