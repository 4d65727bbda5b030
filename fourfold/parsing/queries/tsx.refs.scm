; inherits: typescript
; JSX: a component written <Name ...> is a call of Name.
(jsx_opening_element name: [(identifier) (member_expression)] @reference.call (#match? @reference.call "^[A-Z]"))
(jsx_self_closing_element name: [(identifier) (member_expression)] @reference.call (#match? @reference.call "^[A-Z]"))
