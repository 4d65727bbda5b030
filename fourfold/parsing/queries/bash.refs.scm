(command name: (command_name (word) @_c) argument: (_) @reference.import (#any-of? @_c "source" "."))
(command name: (command_name (word) @reference.call) (#not-match? @reference.call "^(source|\\.)$"))
