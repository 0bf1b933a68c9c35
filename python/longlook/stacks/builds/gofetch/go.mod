module longlook/gofetch

go 1.26
