module github.com/kulehq/kule

go 1.26.8

require (
	github.com/spf13/cobra v1.10.2
	golang.org/x/sys v0.50.0
)

require (
	github.com/BurntSushi/toml v1.6.0 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/mattn/go-pointer v0.0.1 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	github.com/tree-sitter/go-tree-sitter v0.25.0 // indirect
	github.com/tree-sitter/tree-sitter-c-sharp v0.23.1 // indirect
	github.com/tree-sitter/tree-sitter-javascript v0.23.1 // indirect
	github.com/tree-sitter/tree-sitter-python v0.23.6 // indirect
	github.com/tree-sitter/tree-sitter-rust v0.24.0 // indirect
	github.com/tree-sitter/tree-sitter-typescript v0.23.2 // indirect
)
