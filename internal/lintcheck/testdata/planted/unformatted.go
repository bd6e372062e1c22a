package planted

// Unformatted is not gofmt-formatted.
func  Unformatted( ) {}
