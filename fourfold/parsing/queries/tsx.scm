; inherits: typescript
; TSX: the TypeScript patterns as they are.
