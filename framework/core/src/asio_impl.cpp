// The one translation unit that compiles Boost.Asio (BOOST_ASIO_SEPARATE_COMPILATION), its TLS
// layer (OpenSSL) included.
#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
