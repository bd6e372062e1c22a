module github.com/kulehq/kule

go 1.26.8

require (
	github.com/spf13/cobra v1.10.2
	golang.org/x/sys v0.50.0
)

require (
	github.com/BurntSushi/toml v1.6.0 // indirect
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/landlock-lsm/go-landlock v0.11.2 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	kernel.org/pub/linux/libs/security/libcap/psx v1.2.78 // indirect
)
