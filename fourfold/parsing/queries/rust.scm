; Rust: items; functions in impl/trait blocks become methods, qualified as Type::method.
(function_item name: (identifier) @name) @definition.function
(function_signature_item name: (identifier) @name) @definition.function
(struct_item name: (type_identifier) @name) @definition.struct
(union_item name: (type_identifier) @name) @definition.struct
(enum_item name: (type_identifier) @name) @definition.enum
(trait_item name: (type_identifier) @name) @definition.trait
(impl_item type: (_) @name) @definition.impl
(mod_item name: (identifier) @name) @definition.module
(type_item name: (type_identifier) @name) @definition.type
(macro_definition name: (identifier) @name) @definition.macro
(source_file (const_item name: (identifier) @name) @definition.constant)
(source_file (static_item name: (identifier) @name) @definition.constant)
(declaration_list (const_item name: (identifier) @name) @definition.constant)
(declaration_list (static_item name: (identifier) @name) @definition.constant)
; `pub use`: a name made public here though defined elsewhere, often outside the indexed tree
; (axum's extract::FromRequest lives in axum-core). Ranked after real definitions.
(use_declaration (visibility_modifier) argument: (scoped_identifier name: (identifier) @name) @definition.reexport)
(use_declaration (visibility_modifier) argument: (use_as_clause alias: (identifier) @name) @definition.reexport)
(use_declaration (visibility_modifier) argument: (scoped_use_list list: (use_list [
  (identifier) @name @definition.reexport
  (scoped_identifier name: (identifier) @name) @definition.reexport
  (use_as_clause alias: (identifier) @name) @definition.reexport])))
(use_declaration (visibility_modifier) argument: (scoped_use_list list: (use_list (scoped_use_list list: (use_list [
  (identifier) @name @definition.reexport
  (scoped_identifier name: (identifier) @name) @definition.reexport
  (use_as_clause alias: (identifier) @name) @definition.reexport])))))
