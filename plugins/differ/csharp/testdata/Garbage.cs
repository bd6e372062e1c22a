class { namespace ; } } [[[ operator
