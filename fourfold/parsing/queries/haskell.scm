; Haskell: module header, functions (type signature + equations are merged into one symbol),
; data/newtype/type synonyms, type classes (kind interface), instances (kind impl, named
; after the instance type).
(header module: (module) @name) @definition.module
(signature name: (variable) @name) @definition.function
(function name: (variable) @name) @definition.function
(bind name: (variable) @name) @definition.function
(data_type name: (name) @name) @definition.type
(newtype name: (name) @name) @definition.type
(type_synonym name: (name) @name) @definition.type
(type_family name: (name) @name) @definition.type
(class name: (name) @name) @definition.interface
(instance patterns: (type_patterns . (_) @name)) @definition.impl
