// placeholder, replaced by the host implementation
