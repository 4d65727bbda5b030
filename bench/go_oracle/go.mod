module fourfold/bench/go_oracle

go 1.19
