module longlook/stacks/quicgo

go 1.26.0

require (
	github.com/quic-go/quic-go v0.65.0
	longlook/gofetch v0.0.0
)

require (
	github.com/quic-go/qpack v0.6.0 // indirect
	golang.org/x/crypto v0.54.0 // indirect
	golang.org/x/net v0.56.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	golang.org/x/text v0.40.0 // indirect
)

// the Go client programs' shared fetch JSON and page load, beside this folder in the source
// tree; the stack builder copies it beside the program and points this line at the copy
replace longlook/gofetch => ../../builds/gofetch
