package broken

func Fine() int {
	return 1
}

func Broken( int {
	return
}

type After struct{}
