"""`kbtool bisect`: the first release of a package where a result changed."""
