; Elixir: modules, protocols (interface), impls, functions (def/defp; clauses merged),
; macros. Functions in a module stay kind "function" and are qualified Module.fun.
(call target: (identifier) @_kw (arguments . (alias) @name)
  (#any-of? @_kw "defmodule")) @definition.module
(call target: (identifier) @_kw (arguments . (alias) @name)
  (#eq? @_kw "defprotocol")) @definition.interface
(call target: (identifier) @_kw (arguments . (alias) @name)
  (#eq? @_kw "defimpl")) @definition.impl
(call target: (identifier) @_kw
  (arguments . [
    (identifier) @name
    (call target: (identifier) @name)
    (binary_operator left: (call target: (identifier) @name) operator: "when")
    (binary_operator left: (identifier) @name operator: "when")
  ])
  (#any-of? @_kw "def" "defp" "defdelegate" "defguard" "defguardp" "defn" "defnp")) @definition.function
(call target: (identifier) @_kw
  (arguments . [
    (identifier) @name
    (call target: (identifier) @name)
    (binary_operator left: (call target: (identifier) @name) operator: "when")
  ])
  (#any-of? @_kw "defmacro" "defmacrop")) @definition.macro
