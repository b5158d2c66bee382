// The one translation unit that compiles Boost.Beast (BOOST_BEAST_SEPARATE_COMPILATION).
#include <boost/beast/src.hpp>
