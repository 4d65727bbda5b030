"""The interface of a language's resolution rules."""
from __future__ import annotations

from ..imports import Binding, Import, Modules


class Language:
    """How one language's imports and calls resolve. The defaults suit a language that
    has none of the rules below; a subclass overrides what its language does differently.

    Call rules (read by fourfold.graph.calls):

    * `implicit_this`: a plain name inside a method may be a member of its class
      (`speak()` meaning `this.speak()`).
    * `same_package`: the files of one folder see each other's top-level names unimported.
    * `members_outside_type`: a type's methods may be declared in other files (Go receivers,
      Rust impl blocks, Swift extensions, partial classes).
    * `method_receivers`: in a method, `recv.name()` with `recv` a plain name that is no
      import or type calls a member of the method's own receiver type (Go `s.helper()`):
      a guess by name, used where the receiver's declared type is not known.
    * `scope_per_symbol`: calls resolve per calling symbol rather than once per enclosing
      type (the receiver is read from the calling method itself).
    * `constructor_calls`: `Type.<name>` makes a Type (Ruby `Type.new`).
    * `capitalized_receivers_are_types`: `Name.call` with an unresolved capitalized `Name`
      is a constant of another library, not a receiver of unknown type.
    """

    implicit_this = False
    same_package = False
    members_outside_type = False
    method_receivers = False
    scope_per_symbol = False
    constructor_calls: frozenset[str] = frozenset()
    capitalized_receivers_are_types = False

    def __init__(self, name: str, family: str | None = None):
        self.name = name
        # languages of one family share their name index and module files
        self.family = family or name

    def resolve_import(self, modules: Modules, path: str, imp: Import) -> list[Binding]:
        """What `imp`, made in file `path`, binds; a Binding without paths where the
        module is not in the repository."""
        return [Binding(imp.module, imp.name, imp.alias, imp.line, [])]
