class { ( < > }} @@ function
