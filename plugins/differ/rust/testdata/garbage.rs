fn }}} ((( impl <<< for
